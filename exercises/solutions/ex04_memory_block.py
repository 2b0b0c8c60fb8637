"""Assignment 04: the Memory Block of the Recurrent Memory Network (solution).

See the template ``exercises/ex04_memory_block.py`` for the task.
"""

from __future__ import annotations

import torch


def memory_window(tokens: torch.Tensor, mask: torch.Tensor | None, size: int) -> tuple[torch.Tensor, torch.Tensor]:
    batch, time = tokens.shape
    real = torch.ones_like(tokens, dtype=torch.bool) if mask is None else mask.bool()
    ids = torch.cat([tokens.new_zeros(batch, size - 1), tokens], dim=1)  # (batch, size-1 + time)
    present = torch.cat([real.new_zeros(batch, size - 1), real], dim=1)
    return ids.unfold(1, size, 1), present.unfold(1, size, 1)  # (batch, time, size) each


def temporal_rows(time: int, size: int) -> torch.Tensor:
    slots = torch.arange(size)[None, :]  # (1, size)
    words = (torch.arange(time) + 1).clamp(max=size)[:, None]  # (time, 1): words in memory
    return (slots - (size - words)).clamp(min=0)  # (time, size)


def gated_composition(s, h, W_z, U_z, b_z, W_r, U_r, b_r, W, U, b):
    z = torch.sigmoid(s @ W_z.T + b_z + h @ U_z.T)  # Eq. 4
    r = torch.sigmoid(s @ W_r.T + b_r + h @ U_r.T)  # Eq. 5
    h_tilde = torch.tanh(s @ W.T + b + (r * h) @ U.T)  # Eq. 6
    return (1 - z) * h + z * h_tilde  # Eq. 7
