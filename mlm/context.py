"""The context a model actually uses: perplexity with the history cut to k tokens.

In the spirit of Khandelwal et al. (2018), "Sharp Nearby, Fuzzy Far Away": every target is scored by
the model started from a zero state (and an empty memory) on only the k input tokens before it, the
current input included, within the history the protocol gives it (its sentence, its document, or its
row of the stream). k = 1 is a model that sees one word; when k reaches the longest history it is the
ordinary evaluation of the sentence protocol, which also starts every sentence from zero. If the
perplexity stops improving beyond some k, the model uses no more context than that.

The cut applies the same way to every head: each target gets a window of its k previous inputs,
right-padded and masked, so all heads (which are causal) read exactly those tokens; windows are
grouped by length and run many at once, and only the last position of each window is decoded.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from mlm.data.batching import Batches
from mlm.evaluation import EvalResult, evaluate

HISTORY_CUTS = (1, 2, 5, 10, 20, 50, None)  # None: all the history the protocol gives


def protocol_histories(batches: Batches) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Every scored position of ``batches`` as flat ``(inputs, targets, sequence)`` tensors (N,), each
    sequence's positions together and in time order. A sequence is what one evaluation row sees from
    a zero state: a sentence, a document (until ``reset``), or a row of the stream."""
    inputs, targets, sequences = [], [], []
    row_ids, next_id = None, 0
    for batch in batches.batches:  # in stored order: the order the state is carried in
        rows = batch.inputs.size(0)
        if row_ids is None or not batches.carry_state or len(row_ids) != rows:
            row_ids, next_id = torch.arange(next_id, next_id + rows), next_id + rows
        elif batch.reset is not None and bool(batch.reset.any()):
            fresh = int(batch.reset.sum())
            row_ids = row_ids.clone()
            row_ids[batch.reset] = torch.arange(next_id, next_id + fresh)
            next_id += fresh
        seq = row_ids[:, None].expand_as(batch.inputs)  # (rows, time)
        # Padding sits only at the end of a sequence, so dropping it leaves no holes.
        inputs.append(batch.inputs[batch.mask])
        targets.append(batch.targets[batch.mask])
        sequences.append(seq[batch.mask])
    seq = torch.cat(sequences)
    order = torch.sort(seq, stable=True).indices  # batches in order, time in order within each
    return torch.cat(inputs)[order], torch.cat(targets)[order], seq[order]


def sequence_starts(sequence: torch.Tensor) -> torch.Tensor:
    """(N,) flat index of the first position of each position's sequence."""
    everywhere = torch.arange(sequence.numel())
    starts_here = torch.ones(sequence.numel(), dtype=torch.bool)
    starts_here[1:] = sequence[1:] != sequence[:-1]
    return torch.cummax(torch.where(starts_here, everywhere, 0), 0).values


def history_windows(inputs: torch.Tensor, seq_start: torch.Tensor, k: int | None, positions: torch.Tensor,
                    pad_id: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """For the flat ``positions`` (n,), their windows of at most k inputs ending at the position and
    not reaching before its sequence's start: ``(windows (n, width), valid (n, width), last (n,))``,
    right-padded, ``last`` the index of the position itself in its window."""
    start = seq_start[positions]  # (n,)
    if k is not None:
        start = torch.maximum(start, positions - k + 1)
    length = positions - start + 1  # (n,) 1..k
    width = int(length.max())
    index = start[:, None] + torch.arange(width)  # (n, width)
    valid = index <= positions[:, None]  # (n, width)
    windows = torch.where(valid, inputs[index.clamp(max=inputs.numel() - 1)], pad_id)
    return windows, valid, length - 1


def _last_logits(model, windows: torch.Tensor, valid: torch.Tensor, last: torch.Tensor) -> torch.Tensor:
    """(n, vocab) logits at each window's ``last`` position, the model started from zero."""
    rows = torch.arange(windows.size(0), device=windows.device)
    if hasattr(model, "features"):  # decode only the positions scored (the softmax dominates the cost)
        head_out, _ = model.features(windows, mask=valid)  # (n, width, head output)
        return model.decode(model.drop(head_out.output[rows, last][:, None]))[:, 0]
    return model(windows, mask=valid).logits[rows, last]


@torch.no_grad()
def evaluate_with_history(model, batches: Batches, k: int | None, max_tokens: int = 1 << 15,
                          device=None) -> EvalResult:
    """Total NLL and token count of ``model`` on ``batches`` with each target's history cut to k inputs.

    ``k=None`` is the ordinary evaluation (:func:`mlm.evaluation.evaluate`: state carried as the
    protocol does). Windows are run ``max_tokens // width`` at a time, shortest first.
    """
    if k is None:
        return evaluate(model, batches, device)
    if k < 1:
        raise ValueError(f"k must be at least 1 (or None for the whole history), got {k}")
    device = device or next(model.parameters()).device
    pad_id = getattr(model, "pad_id", 0)
    inputs, targets, sequence = protocol_histories(batches)
    seq_start = sequence_starts(sequence)  # (N,)
    everywhere = torch.arange(inputs.numel())
    last = torch.minimum(everywhere - seq_start, torch.tensor(k - 1))  # (N,) window length - 1
    order = torch.sort(last, stable=True).indices  # shortest windows first: little padding per group
    was_training = model.training
    model.eval()
    total = torch.zeros((), dtype=torch.float64, device=device)
    i = 0
    while i < len(order):
        n = max(1, max_tokens // int(last[order[i]] + 1))
        n = max(1, max_tokens // int(last[order[min(i + n, len(order)) - 1]] + 1))  # sorted: the group's widest
        pick = order[i:i + n]
        windows, valid, at = history_windows(inputs, seq_start, k, pick, pad_id)
        logits = _last_logits(model, windows.to(device), valid.to(device), at.to(device))  # (n, vocab)
        total += F.cross_entropy(logits.float(), targets[pick].to(device), reduction="sum").double()
        i += n
    model.train(was_training)
    return EvalResult(float(total), inputs.numel())


def history_curve(model, batches: Batches, ks=HISTORY_CUTS, **options) -> dict:
    """k -> perplexity with the history cut to k (None: all), for a plot of context use."""
    return {k: evaluate_with_history(model, batches, k, **options).perplexity for k in ks}
