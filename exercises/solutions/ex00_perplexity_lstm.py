"""Reference solution of assignment 00: perplexity with padding, and an LSTM by hand.

Grade it with ``python -m exercises.grader 00 --solution``.
"""

from __future__ import annotations

import math

import torch


def masked_perplexity(logits: torch.Tensor, targets: torch.Tensor, mask: torch.Tensor) -> float:
    """exp(total NLL over the positions where ``mask`` is True / number of such positions)."""
    # log_softmax subtracts the row maximum before exponentiating, so no probability underflows
    log_probs = torch.log_softmax(logits.double(), dim=-1)  # (batch, time, vocab)
    target_log_probs = log_probs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)  # (batch, time)
    mask = mask.bool()  # (batch, time)
    # Boolean indexing keeps only the scored positions: padding can hold anything
    total_nll = -target_log_probs[mask].sum()
    count = int(mask.sum())
    return math.exp(total_nll.item() / count)


def lstm_cell(x, h, c, w_ih, w_hh, b_ih, b_hh):
    """One LSTM step in ``nn.LSTM``'s layout; returns ``(h_new, c_new)``, both (batch, hidden)."""
    gates = x @ w_ih.T + b_ih + h @ w_hh.T + b_hh  # (batch, 4 * hidden)
    i, f, g, o = gates.chunk(4, dim=-1)  # each (batch, hidden), in nn.LSTM's order
    i = torch.sigmoid(i)  # input gate: how much of the candidate to write
    f = torch.sigmoid(f)  # forget gate: how much of the old cell to keep
    g = torch.tanh(g)  # candidate cell content
    o = torch.sigmoid(o)  # output gate: how much of the cell to show
    c_new = f * c + i * g  # (batch, hidden)
    h_new = o * torch.tanh(c_new)  # (batch, hidden)
    return h_new, c_new


def run_lstm(x, h0, c0, w_ih, w_hh, b_ih, b_hh):
    """A single-layer LSTM over ``x`` (batch, time, input), one ``lstm_cell`` call per step."""
    h, c = h0, c0  # (batch, hidden)
    outputs = []
    for t in range(x.size(1)):
        h, c = lstm_cell(x[:, t], h, c, w_ih, w_hh, b_ih, b_hh)
        outputs.append(h)
    return torch.stack(outputs, dim=1), (h, c)  # (batch, time, hidden), ((batch, hidden), (batch, hidden))
