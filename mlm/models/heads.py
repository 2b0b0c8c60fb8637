"""Memory heads: what happens between the LSTM outputs and the softmax.

A head receives the top LSTM layer's outputs for all time steps at once and returns the
vector the softmax reads, plus (optionally) attention weights for analysis and a memory
state to carry into the next segment. The baseline's head is the identity; each later
chapter adds one small module with the same interface (one file per model).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn


@dataclass
class HeadOutput:
    output: torch.Tensor  # (batch, time, output_size): what the softmax reads
    attention: torch.Tensor | None = None  # e.g. (batch, time, memory slots)
    memory: object = None  # carried into the next segment (document protocol)


class MemoryHead(nn.Module):
    """Interface of a memory head.

    ``forward(h, tokens=, mask=, memory=, reset=)`` gets the LSTM outputs ``h``
    (batch, time, hidden), the input ids ``tokens`` (batch, time), the input padding mask
    (batch, time; None means no padding), the memory carried from the previous segment
    and the per-row ``reset`` flags (batch,) of the document protocol.
    """

    output_size: int

    def forward(self, h, *, tokens=None, mask=None, memory=None, reset=None) -> HeadOutput:  # pragma: no cover
        raise NotImplementedError


class IdentityHead(MemoryHead):
    """The LSTM baseline: the softmax reads h_t directly (Zaremba et al., 2014)."""

    def __init__(self, hidden_size: int):
        super().__init__()
        self.output_size = hidden_size

    def forward(self, h, *, tokens=None, mask=None, memory=None, reset=None) -> HeadOutput:
        return HeadOutput(h)
