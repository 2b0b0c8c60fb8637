"""Reference solution of assignment 03: the key-value-predict split and the window mask.

Grade it with ``python -m exercises.grader 03 --solution``.
"""

from __future__ import annotations

import torch

PARTS = {"attention": 1, "key-value": 2, "key-value-predict": 3}  # kind -> equal parts of h_t


def split_output(h: torch.Tensor, kind: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(key, value, predict) of h along its last axis (Eq. 6 and 11); plain attention uses h three times."""
    if kind not in PARTS:
        raise ValueError(f"kind must be one of {', '.join(PARTS)}, got {kind!r}")
    parts, size = PARTS[kind], h.shape[-1]
    if size % parts:
        raise ValueError(f"a {kind} output splits into {parts} equal parts, so its last dimension must be a "
                         f"multiple of {parts} (got {size})")
    if parts == 1:
        return h, h, h
    pieces = h.split(size // parts, dim=-1)  # consecutive blocks: [k; v] or [k; v; p]
    if parts == 2:
        return pieces[0], pieces[1], pieces[1]  # key-value: the value also predicts (Eq. 10)
    return pieces[0], pieces[1], pieces[2]


def extend_with_memory(h: torch.Tensor, mask: torch.Tensor | None, memory, reset: torch.Tensor | None,
                       window: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The carried ``window`` outputs then this segment's, (batch, window + time, hidden), and their validity."""
    batch, time, hidden = h.shape
    if memory is None:  # the very first segment: nothing carried yet
        past = h.new_zeros(batch, window, hidden)
        past_valid = torch.zeros(batch, window, dtype=torch.bool, device=h.device)
    else:
        past, past_valid = memory
        past_valid = past_valid.bool()
        if reset is not None:  # a row that starts a new document forgets the previous one
            past_valid = past_valid & ~reset.bool()[:, None]
    current_valid = (torch.ones(batch, time, dtype=torch.bool, device=h.device) if mask is None
                     else mask.bool())
    seq = torch.cat([past.to(h.dtype), h], dim=1)  # (batch, window + time, hidden)
    valid = torch.cat([past_valid, current_valid], dim=1)  # (batch, window + time)
    return seq, valid


def window_mask(valid: torch.Tensor, window: int, time: int) -> torch.Tensor:
    """allowed[b, t, j] = valid[b, t + j]: slot j (oldest first) of step t holds h_{t-window+j}."""
    positions = torch.arange(time, device=valid.device)[:, None] + torch.arange(window, device=valid.device)
    return valid.bool()[:, positions]  # (batch, time, window)


def window_attention(key, value, predict, valid, W_Y, W_h, w, W_r, W_x) -> tuple[torch.Tensor, torch.Tensor]:
    """h*_t and alpha_t of Eq. 1-4 / 7-10 / 12 for every step at once; zero context for an empty window."""
    time = predict.shape[1]
    window = key.shape[1] - time
    positions = torch.arange(time, device=key.device)[:, None] + torch.arange(window, device=key.device)
    key_windows = key[:, positions]  # (batch, time, window, k): k_{t-L} .. k_{t-1}
    value_windows = value[:, positions]  # (batch, time, window, k)
    query = key[:, window:]  # (batch, time, k): the current key k_t
    M = torch.tanh(key_windows @ W_Y.T + (query @ W_h.T)[:, :, None, :])  # (batch, time, window, k), Eq. 1 / 7
    scores = M @ w  # (batch, time, window), Eq. 2 / 8 before the softmax
    allowed = window_mask(valid, window, time)  # (batch, time, window)
    # Softmax over the allowed slots only. Shift by the row maximum (no gradient needed: the softmax
    # ignores shifts); an empty row has maximum -inf and uses 0, and its total 0 is divided by 1.
    filled = scores.masked_fill(~allowed, float("-inf"))
    row_max = filled.amax(dim=-1, keepdim=True).detach()
    row_max = torch.where(torch.isfinite(row_max), row_max, torch.zeros_like(row_max))
    exps = torch.exp(filled - row_max)  # exactly 0 at disallowed slots
    total = exps.sum(dim=-1, keepdim=True)
    alpha = exps / torch.where(total > 0, total, torch.ones_like(total))  # (batch, time, window), Eq. 2 / 8
    r = (alpha[..., None] * value_windows).sum(dim=-2)  # (batch, time, k), Eq. 3 / 9
    out = torch.tanh(r @ W_r.T + predict @ W_x.T)  # (batch, time, k), Eq. 4 / 10 / 12
    return out, alpha
