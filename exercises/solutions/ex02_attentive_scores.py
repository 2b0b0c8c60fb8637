"""Reference solution of assignment 02: the Attentive LM's combined score and causal memory mask.

Grade it with ``python -m exercises.grader 02 --solution``.
"""

from __future__ import annotations

import torch


def causal_memory_mask(mask: torch.Tensor | None, batch: int, time: int) -> torch.BoolTensor:
    """(batch, time, time) True where query step t may attend to slot i: i < t and slot i not padding."""
    device = mask.device if mask is not None else None
    steps = torch.arange(time, device=device)  # (time,)
    causal = steps[None, :] < steps[:, None]  # (time [t], time [i]): strictly earlier slots only
    allowed = causal.unsqueeze(0).expand(batch, time, time)  # (batch, time, time)
    if mask is not None:
        allowed = allowed & mask.bool()[:, None, :]  # a padded slot is masked for every query
    return allowed


def combined_scores(h: torch.Tensor, W_s: torch.Tensor, W_q: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """scores[b, t, i] = v . tanh(W_s h[b, i] + W_q h[b, t]), for all pairs at once (Eq. 10)."""
    keys = h @ W_s.T  # (batch, time, attn): W_s h_i, once per memory slot
    queries = h @ W_q.T  # (batch, time, attn): W_q h_t, once per query step
    pairs = torch.tanh(keys[:, None, :, :] + queries[:, :, None, :])  # (batch, time [t], time [i], attn)
    return pairs @ v  # (batch, time, time)


def attend(h: torch.Tensor, scores: torch.Tensor, allowed: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Softmax over the allowed slots (all zeros for an empty memory) and the context weights @ h."""
    allowed = allowed.bool()
    filled = scores.masked_fill(~allowed, float("-inf"))  # (batch, time, time): disallowed slots drop out
    # Shift each row by its largest allowed score so that exp never overflows. The softmax does
    # not change under a shift, so the shift needs no gradient; an empty row (max -inf) uses 0.
    row_max = filled.amax(dim=-1, keepdim=True).detach()  # (batch, time, 1)
    row_max = torch.where(torch.isfinite(row_max), row_max, torch.zeros_like(row_max))
    exps = torch.exp(filled - row_max)  # (batch, time, time), in [0, 1], exactly 0 where disallowed
    total = exps.sum(dim=-1, keepdim=True)  # (batch, time, 1), 0 only for an empty row
    weights = exps / torch.where(total > 0, total, torch.ones_like(total))  # empty rows stay 0, no 0/0
    context = weights @ h  # (batch, time, hidden), Eq. 3
    return weights, context
