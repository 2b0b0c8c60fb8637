"""An LSTM written out equation by equation: the reference chapter 00 checks ``nn.LSTM`` against.

Gates (Hochreiter & Schmidhuber 1997, in the form of Zaremba et al. 2014, section 3)::

    i_t = sigmoid(W_ii x_t + b_ii + W_hi h_{t-1} + b_hi)      input gate
    f_t = sigmoid(W_if x_t + b_if + W_hf h_{t-1} + b_hf)      forget gate
    g_t = tanh   (W_ig x_t + b_ig + W_hg h_{t-1} + b_hg)      candidate cell
    o_t = sigmoid(W_io x_t + b_io + W_ho h_{t-1} + b_ho)      output gate
    c_t = f_t * c_{t-1} + i_t * g_t
    h_t = o_t * tanh(c_t)

This loops over time in Python on purpose: it is the slow, readable reference. Models
use the fused ``nn.LSTM``.
"""

from __future__ import annotations

import torch
from torch import nn


def lstm_cell_step(x, h, c, w_ih, w_hh, b_ih, b_hh):
    """One step. x (batch, in), h and c (batch, hidden); weights in ``nn.LSTM``'s layout."""
    gates = x @ w_ih.T + b_ih + h @ w_hh.T + b_hh  # (batch, 4 * hidden)
    i, f, g, o = gates.chunk(4, dim=-1)  # nn.LSTM orders the gates i, f, g, o
    i, f, g, o = torch.sigmoid(i), torch.sigmoid(f), torch.tanh(g), torch.sigmoid(o)
    c = f * c + i * g
    h = o * torch.tanh(c)
    return h, c


class ManualLSTM(nn.Module):
    """Multi-layer LSTM with a Python loop over time, sharing ``nn.LSTM``'s parameters."""

    def __init__(self, lstm: nn.LSTM):
        super().__init__()
        if not lstm.batch_first:
            raise ValueError("ManualLSTM expects a batch_first nn.LSTM")
        self.lstm = lstm

    def forward(self, x, state=None):
        batch, time, _ = x.shape
        layers, hidden = self.lstm.num_layers, self.lstm.hidden_size
        if state is None:
            state = (x.new_zeros(layers, batch, hidden), x.new_zeros(layers, batch, hidden))
        hs, cs = [], []
        layer_input = x
        for layer in range(layers):
            w_ih = getattr(self.lstm, f"weight_ih_l{layer}")
            w_hh = getattr(self.lstm, f"weight_hh_l{layer}")
            b_ih = getattr(self.lstm, f"bias_ih_l{layer}")
            b_hh = getattr(self.lstm, f"bias_hh_l{layer}")
            h, c = state[0][layer], state[1][layer]
            outputs = []
            for t in range(time):
                h, c = lstm_cell_step(layer_input[:, t], h, c, w_ih, w_hh, b_ih, b_hh)
                outputs.append(h)
            layer_input = torch.stack(outputs, dim=1)  # (batch, time, hidden)
            hs.append(h)
            cs.append(c)
        return layer_input, (torch.stack(hs), torch.stack(cs))
